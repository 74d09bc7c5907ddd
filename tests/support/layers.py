"""The layers of leash's code as the layering test holds them, read by that
test and by the test that docs/architecture.md shows the same ones.

core/'s layers from the bottom; layers in one tier stand side by side and
never import each other. A module imports its own layer and the tiers below.
console/'s front ends stand side by side over what they share.
"""
LAYER_TIERS = (("base",), ("wire",), ("policy",), ("state",), ("store",),
               ("hook", "notify", "warrants"), ("views",), ("daemon",))
TIER_OF = {layer: tier for tier, layers in enumerate(LAYER_TIERS) for layer in layers}

CONSOLE_SHARED = {"leash.console", "leash.console.errors", "leash.console.operations"}
FRONT_ENDS = ("cli", "tui", "serve")
