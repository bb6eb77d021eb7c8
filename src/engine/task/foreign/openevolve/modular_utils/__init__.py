# ThetaEvolve's stand-in for the ThetaEvolve release's openevolve.modular_utils
# (ypwang61/ThetaEvolve, openevolve_adapted/openevolve/modular_utils), used when
# the release's own package is not importable. Our own code, written from the
# interface its evaluators, verify.py files and initial programs call; see
# docs/architecture.md "Release task folders".
