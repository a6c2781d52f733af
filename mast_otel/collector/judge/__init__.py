"""Judge: the judge workers, the judges they call, cost controls, and the log records a judge reads beside the spans."""
