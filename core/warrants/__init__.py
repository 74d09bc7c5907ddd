"""Warrants, tier 5 of the layers (docs/architecture.md): leash acting on an agent's pane or process.

The kennel (``kennel``) runs a dog (``dog``) per warrant; the dog speaks into
the pane (``speech``) and kills what does not answer. ``interrupt`` cancels a
running call. The warrant queue and its records are state
(``leash.core.state.warrants``).
"""
