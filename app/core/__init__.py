"""Core infrastructure every layer above uses: settings, the database engines and sessions, background jobs,
migrations, metrics, key hashing, the domain's errors (RFC 9457 problems) and the types shared by request and
response models.  It knows nothing of ladders, players or games."""
