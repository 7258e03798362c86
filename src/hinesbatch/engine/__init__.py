"""The simulator's engine: the time loop and its results (:class:`~.results.Results`)."""
