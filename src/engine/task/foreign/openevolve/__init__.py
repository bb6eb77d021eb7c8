# ThetaEvolve's stand-in for the `openevolve` package, so that evaluators
# written for OpenEvolve import without it installed. Only what evaluators
# import is here: openevolve.evaluation_result.EvaluationResult.
