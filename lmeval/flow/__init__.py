"""Staged runs outside the CLI (#60 item 2, begun by #62): a judge's grades written back into the run it judged
(``grading``), and ``lmeval run``'s judge path (``judged``: a judge-graded task's judge plans compiled, executed and
graded per stage, FastChat's MT-Bench summary written as the task's metrics)."""
