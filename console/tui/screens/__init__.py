"""The console's screens and modals."""
