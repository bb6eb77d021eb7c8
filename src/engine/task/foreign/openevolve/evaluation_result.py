# Compatible with openevolve.evaluation_result.EvaluationResult (our own
# code, written from its public interface): metrics plus optional artifacts.
from dataclasses import dataclass, field
from typing import Dict, Union


@dataclass
class EvaluationResult:
    metrics: Dict[str, float]
    artifacts: Dict[str, Union[str, bytes]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, metrics):
        return cls(metrics=metrics)

    def to_dict(self):
        return self.metrics

    def has_artifacts(self):
        return bool(self.artifacts)

    def get_artifact_keys(self):
        return list(self.artifacts.keys())

    def get_artifact_size(self, key):
        if key not in self.artifacts:
            return 0
        value = self.artifacts[key]
        if isinstance(value, bytes):
            return len(value)
        return len(str(value).encode("utf-8"))

    def get_total_artifact_size(self):
        return sum(self.get_artifact_size(key) for key in self.artifacts)
