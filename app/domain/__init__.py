"""The rules several features share: who may do what to a ladder (:mod:`~app.domain.access`), re-rating after the
log changed below its end (:mod:`~app.domain.rerating`) and when a ladder's next auto refit is due
(:mod:`~app.domain.refit_policy`)."""
