"""Offline refit: maximum likelihood over the whole event log (mathematics §9; [Guide] §7)."""
