"""The rules several features share: who may do what to a ladder (:mod:`~app.domain.access`), which player a key
names (:mod:`~app.domain.player_keys`), re-rating after the log changed below its end (:mod:`~app.domain.rerating`),
when a ladder's next auto refit is due (:mod:`~app.domain.refit_policy`) and the months and quarters after which
seasons close themselves (:mod:`~app.domain.season_periods`)."""
