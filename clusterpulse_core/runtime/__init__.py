"""The controller runtime: informers, work queues, workers, the manager."""
