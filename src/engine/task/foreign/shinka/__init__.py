# ThetaEvolve's stand-in for the `shinka` package, so that evaluators written
# for ShinkaEvolve import without it installed: shinka.core.run_shinka_eval.
