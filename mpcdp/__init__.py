"""mpcdp — distributed differentially-private learning over secure multi-party computation.

Importing the package does nothing but define names; CrypTen is imported only when a party starts
(:mod:`mpcdp.adapter`).
"""

__version__ = "0.1.0"
