"""Core infrastructure every layer above uses: settings, the database engines and sessions, background jobs,
migrations, metrics, key hashing, the errors the API answers (RFC 9457 problems), page cursors and the types
shared by request and response models.  It knows nothing of ladders, players or games."""
