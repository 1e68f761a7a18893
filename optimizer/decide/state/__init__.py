"""What a decision reads: the fleet as columns, live telemetry, the prefix index, the
estimates on candidate columns, the feature contract and the snapshot."""
