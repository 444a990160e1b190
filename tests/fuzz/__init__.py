"""A mutation fuzz harness for the converters, over every source's real inputs.

- :mod:`tests.fuzz.seeds`: the inputs mutated (the fixture files of
  ``tests/convert/fixtures`` and the corpus built by :mod:`tests.fuzz.corpus`);
- :mod:`tests.fuzz.mutations`: one structure-aware change of a seed;
- :mod:`tests.fuzz.oracle`: what a mutant must do, and the verdict;
- :mod:`tests.fuzz.shrink`: a failing mutant's seed cut down around the change;
- :mod:`tests.fuzz.campaign`: many mutants of every source, tallied;
- ``python -m tests.fuzz``: a campaign from the command line (see ``__main__``).

The suite runs a bounded campaign (``test_fuzz.py``); CONTRIBUTING.md says how to run a
long one.
"""
