"""The analyst service: the data, the policies and the ledger in a process the analyst cannot reach.

An in-process :class:`blowfish_nb.Session` is budget accounting for an honest
analyst; this package is the boundary. The curator serves a data set
(:func:`serve`, ``blowfish-nb serve``); analysts reach it over HTTP with a
token (:func:`connect`), from their own kernels.
"""
