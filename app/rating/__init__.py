"""The mElo mathematics (mathematics §1-§12): pure, vectorised NumPy and SciPy functions.

This package imports NumPy and SciPy only, never the database or HTTP layers.
"""

from app.rating.draws import (
    draw_probability,
    draw_room,
    draw_share,
    outcome_probabilities,
    two_sided_draws,
    two_sided_draws_apart,
)
from app.rating.errors import RatingInputError
from app.rating.experience import experience_before
from app.rating.game_log import Game, GameLog, pair_outcomes, rank_share, ranks_from_scores, record, results
from app.rating.initial import initial_vectors, stable_hash
from app.rating.model import (
    ELO_PER_LOGIT,
    advantage,
    advantage_from_probability,
    advantage_matrix,
    elo_to_logits,
    logits_to_elo,
    omega,
    pair_advantage,
    pair_probability,
    probability_matrix,
    sigmoid,
    win_probability,
)
from app.rating.replay import History, dependency_levels, games_before, replay, replay_history
from app.rating.season_pull import kept_weights, pull_back, pull_experience, pull_variance
from app.rating.seats import Seats, prior_precision
from app.rating.strength import (
    balanced_opponents,
    conservative,
    elo_equivalent,
    field_information,
    field_mean,
    field_prior,
    field_score,
    hodge_strength,
    hodge_strength_against,
    strength_se,
)
from app.rating.update import GameResult, LearningRate, apply_game, predict_match, unnormalised_update
from app.rating.variance import VarianceRule

__all__ = [
    "ELO_PER_LOGIT",
    "Game",
    "GameLog",
    "GameResult",
    "History",
    "LearningRate",
    "RatingInputError",
    "Seats",
    "VarianceRule",
    "advantage",
    "advantage_from_probability",
    "advantage_matrix",
    "apply_game",
    "balanced_opponents",
    "conservative",
    "dependency_levels",
    "draw_probability",
    "draw_room",
    "draw_share",
    "elo_equivalent",
    "elo_to_logits",
    "experience_before",
    "field_information",
    "field_mean",
    "field_prior",
    "field_score",
    "games_before",
    "hodge_strength",
    "hodge_strength_against",
    "initial_vectors",
    "kept_weights",
    "logits_to_elo",
    "omega",
    "outcome_probabilities",
    "pair_advantage",
    "pair_outcomes",
    "pair_probability",
    "predict_match",
    "prior_precision",
    "probability_matrix",
    "pull_back",
    "pull_experience",
    "pull_variance",
    "rank_share",
    "ranks_from_scores",
    "record",
    "replay",
    "replay_history",
    "results",
    "sigmoid",
    "stable_hash",
    "strength_se",
    "two_sided_draws",
    "two_sided_draws_apart",
    "unnormalised_update",
    "win_probability",
]
