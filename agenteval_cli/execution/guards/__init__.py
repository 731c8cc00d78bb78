"""What keeps a hostile or careless target from harming the run, one guard a module.

- :mod:`.deadline`: a call's time-out in its own time; which call holds the event loop.
- :mod:`.stalls`: the loop's heartbeat, and the target that blocked it named.
- :mod:`.watchdog`: Ctrl-C and SIGTERM stop a run; one that will not stop ends by force,
  what finished saved first.
- :mod:`.daemon_pool`: sync calls on daemon threads, so one stuck past its time-out never
  holds the process.
- :mod:`.leftovers`: tasks the calls left behind, cancelled, and abandoned if they refuse;
  the run's event loop, whose closing never waits forever for one.
- :mod:`.heap`: the heap loaded before the run, kept out of the collector's way during it.

The runner's loop (:mod:`agenteval_cli.execution.runner`) uses each through its one function
or class; none of them knows the runner.
"""
