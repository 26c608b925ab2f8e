"""lmeval's command line: wires compile → execute → score and diff. The stages live in their own packages."""

__version__ = "0.1.0"
