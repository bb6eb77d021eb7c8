# A stand-in for the `dacite` package OpenEvolve's config module imports,
# for bench evaluation-end-to-end only (never shipped): the bench builds
# OpenEvolve's Config itself, so from_dict is never called.
class Config:
    def __init__(self, **options):
        self.options = options


def from_dict(data_class, data, config=None):
    raise NotImplementedError("the bench builds OpenEvolve's Config directly")
