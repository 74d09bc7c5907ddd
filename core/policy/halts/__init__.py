"""The halt conditions (the seed's "Halt Conditions Design") and the engine that
runs them over one parsed tool call. Recording, acknowledging and listing
halts is state (``leash.core.state.halts``).
"""
