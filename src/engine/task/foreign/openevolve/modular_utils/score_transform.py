# The release's reward shaping of a raw objective (docs/algorithm.md section 5):
# negative values (error codes) pass; else clamp to [A, B] (the range negated
# with the score when minimising), map to [0, 1], raise to alpha, scale.


class ScoreTransformConfig:
    def __init__(self, score_range_min=0.0, score_range_max=1.0, alpha=1.0, optimize_mode="maximize", positive_multiplier=1.0):
        self.score_range_min = score_range_min
        self.score_range_max = score_range_max
        self.alpha = alpha
        self.optimize_mode = optimize_mode.lower()
        self.positive_multiplier = positive_multiplier
        if not score_range_max > score_range_min:
            raise ValueError("score_range_max must be greater than score_range_min")
        if not alpha > 0:
            raise ValueError("alpha must be positive")
        if self.optimize_mode not in ("maximize", "minimize"):
            raise ValueError("optimize_mode must be 'maximize' or 'minimize'")
        if not positive_multiplier > 0:
            raise ValueError("positive_multiplier must be positive")


def transform_score_for_rl(original_score, config):
    if original_score < 0:
        return original_score
    low, high, value = config.score_range_min, config.score_range_max, original_score
    if config.optimize_mode == "minimize":
        low, high, value = -high, -low, -value
    clamped = min(high, max(low, value))
    return ((clamped - low) / (high - low)) ** config.alpha * config.positive_multiplier


def create_score_transform_config_from_dict(config_dict):
    given = config_dict.get("score_transform", {}) or {}
    return ScoreTransformConfig(
        score_range_min=given.get("score_range_min", 0.0),
        score_range_max=given.get("score_range_max", 1.0),
        alpha=given.get("alpha", 1.0),
        optimize_mode=given.get("optimize_mode", "maximize"),
        positive_multiplier=given.get("positive_multiplier", 5.0),
    )
