"""Running many files: tasks, the worker pool, the cache, the garbage collector held off per
file, and the atomic writer; hands FileReports to the output."""
