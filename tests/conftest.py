import os

from hypothesis import HealthCheck, settings

# "ci": what `tox` runs; deterministic (derandomize) so a CI failure reproduces with the same command.
settings.register_profile("ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
