"""The teaching labs in ``notebooks/labs/``: each lab's setting and hint checks, the grader the notebooks use, and the build.

``blowfish_nb.labs.labNN`` holds lab NN's public setting and its hint checks ``qN`` (hints, not answers: salted
hashes in ``hints/labNN.json``); :class:`blowfish_nb.labs._check.Grader` is the student notebook's ``grader``;
:mod:`blowfish_nb.labs._grade` is what the autograder's hidden tests compare with; :mod:`blowfish_nb.labs.build`
makes the student and solution versions and the autograder zips (``make labs``) from the master notebooks and the
answer keys, which live in the repository only (``notebooks/labs/key/``).
"""
