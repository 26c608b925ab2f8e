from lmeval.cli import entry

entry()
