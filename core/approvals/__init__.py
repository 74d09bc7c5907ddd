"""Approvals: answering an agent from the console (DESIGN "Approvals").

``rules``: which calls need a human even in bypass or headless runs (the
``[approvals] ask`` floor). ``summary``: what an operator reads of a waiting
call — one masked line for the log and the lists, the whole command or an
Edit's diff for the detail line.
"""
