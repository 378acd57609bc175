"""A ladder's events sent to other programs: outgoing webhooks (signed, retried, delivered from the ladder's event log
by a background dispatcher) and the Slack slash command."""
