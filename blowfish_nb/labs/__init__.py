"""Checks for the teaching labs in ``notebooks/labs/``: each lab's questions, with hints that explain a wrong answer.

The labs are written for otter-grader (``otter assign``); their test cells call the functions of
``blowfish_nb.labs.labNN`` so that a student sees a hint about the mistake, never the expected value. The
building of student and solution versions lives in :mod:`blowfish_nb.labs.build` (``make labs``).
"""
