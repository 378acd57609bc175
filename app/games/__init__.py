"""Game posts: the checks and idempotency of a post, group commit, applying games, their answers, voids and listing."""
