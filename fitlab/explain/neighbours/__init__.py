"""Autograd's errors next to the in-place one, explained as it is: a backward through a graph an
earlier backward freed, an in-place write to a leaf that requires grad or to a view of one, and one
to a view autograd cannot rebase (one of several a function returned, or a custom Function's).

messages (pure text) tells them apart in a message; freed records the backwards and finds the
graph two of them walked; written reads the write off the raising call; facts turns either into
the report's lines and fix, with the causes of causes.py.
"""
