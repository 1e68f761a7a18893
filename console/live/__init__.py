"""The live stream: realtime events for the dashboard over Channels websockets."""
