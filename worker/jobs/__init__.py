"""Jobs: the heavy steps as records in the run's store, run by Celery workers or by threads
of this process.

- :mod:`.registry`: the job kinds, each with its queue, handler and parameter type;
- :mod:`.params`: the typed parameters and their JSON;
- :mod:`.handlers`: what each kind runs;
- :mod:`.execution`: one job run, its record and heartbeat;
- :mod:`.dispatchers`: submitting, through the broker or in-process;
- :mod:`.client`: following a job, and what to tell the user meanwhile;
- :mod:`.recovery`: jobs whose worker died.
"""
