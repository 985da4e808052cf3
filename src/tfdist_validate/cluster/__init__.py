"""Multi-worker validation: TF_CONFIG, the cluster it names, and its peers."""
