# ThetaEvolve's stand-in for the `openevolve` package, so that evaluators
# written for OpenEvolve, or for the ThetaEvolve release (its modular_utils),
# import without it installed. Only what evaluators import is here:
# openevolve.evaluation_result.EvaluationResult and openevolve.modular_utils.
