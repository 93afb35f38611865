"""Reading Kueue's and Volcano's queue objects: every kind with Kueue's defaults, the
webhooks' refusals, and errors naming the file, line, document and field path."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from phalanx.cli.main import main
from phalanx.config.clusterspec import cluster_from_yaml
from phalanx.config.queues import queues_from_yaml
from phalanx.domain.queues import (
    FungibilityPolicy,
    PreemptionPolicy,
    QueueingStrategy,
    SelectorOp,
    StopPolicy,
    TaintEffect,
)
from phalanx.errors import ConfigError

GI = 2**30 * 1000

FULL = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeLabels: {nvidia.com/gpu.product: H100}
  nodeTaints: [{key: spot, value: "true", effect: NoSchedule}]
  tolerations: [{key: spot, operator: Exists, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohort: research
  namespaceSelector:
    matchExpressions: [{key: team, operator: In, values: [a]}]
  queueingStrategy: StrictFIFO
  preemption:
    reclaimWithinCohort: Any
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
    withinClusterQueue: LowerOrNewerEqualPriority
  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: Preempt}
  fairSharing: {weight: 500m}
  stopPolicy: Hold
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, memory]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 64, borrowingLimit: 8, lendingLimit: 16}
      - {name: memory, nominalQuota: 64Gi}
    - name: a100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: "8"}
      - {name: memory, nominalQuota: 1Ti}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohortName: research
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: research}
spec:
  parentName: org
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 0}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: a}
spec: {clusterQueue: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: default}
spec: {clusterQueue: team-b}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
description: urgent
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  weight: 4
  capability: {nvidia.com/gpu: 64, cpu: "500"}
  guarantee: {resource: {nvidia.com/gpu: 8}}
  reclaimable: false
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
"""


def test_every_kind_with_its_fields() -> None:
    q = queues_from_yaml(FULL, "queues.yaml")
    h100 = q.flavors["h100"]
    assert h100.node_labels == (("nvidia.com/gpu.product", "H100"),)
    assert h100.node_taints[0].effect is TaintEffect.NO_SCHEDULE
    assert h100.tolerations[0].operator == "Exists"
    a = q.cluster_queues["team-a"]
    assert a.cohort == "research" and a.queueing_strategy is QueueingStrategy.STRICT_FIFO
    assert a.namespace_selector is not None
    assert a.namespace_selector.match_expressions[0].op is SelectorOp.IN
    assert a.preemption.reclaim_within_cohort is PreemptionPolicy.ANY
    assert a.preemption.borrow_within_cohort.max_priority_threshold == 100
    assert a.preemption.within_cluster_queue is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
    # "Preempt" is the old name of MayStopSearch
    assert a.flavor_fungibility.when_can_preempt is FungibilityPolicy.MAY_STOP_SEARCH
    assert a.flavor_fungibility.when_can_borrow is FungibilityPolicy.TRY_NEXT_FLAVOR
    assert a.fair_sharing_weight == 0.5 and a.stop_policy is StopPolicy.HOLD
    gpu, memory = a.resource_groups[0].flavors[0].resources
    assert (gpu.nominal, gpu.borrowing_limit, gpu.lending_limit) == (64_000, 8_000, 16_000)
    assert memory.nominal == 64 * GI and memory.borrowing_limit is None
    assert q.cohorts["research"].parent == "org"
    assert q.local_queues[("a", "main")].cluster_queue == "team-a"
    assert ("default", "default") in q.local_queues  # metadata.namespace defaults to default
    assert q.priority_classes["high"].value == 1000
    research = q.volcano_queues["research"]
    assert research.weight == 4 and research.capability["cpu"] == 500_000
    assert research.guarantee == {"nvidia.com/gpu": 8_000} and research.reclaimable is False


def test_kueue_defaults() -> None:
    q = queues_from_yaml(FULL, "queues.yaml")
    b = q.cluster_queues["team-b"]
    assert b.cohort == "research"  # v1beta2's cohortName
    assert b.namespace_selector is None  # absent: no namespace (Kueue's nothing selector)
    assert b.queueing_strategy is QueueingStrategy.BEST_EFFORT_FIFO
    assert b.preemption.reclaim_within_cohort is PreemptionPolicy.NEVER
    assert b.preemption.within_cluster_queue is PreemptionPolicy.NEVER
    assert b.flavor_fungibility.when_can_borrow is FungibilityPolicy.MAY_STOP_SEARCH
    assert b.flavor_fungibility.when_can_preempt is FungibilityPolicy.TRY_NEXT_FLAVOR
    assert b.fair_sharing_weight == 1.0 and b.stop_policy is StopPolicy.NONE
    default = q.volcano_queues["default"]
    assert default.weight == 1 and default.reclaimable and default.capability == {}


CQ_HEAD = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: g}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a}
"""


MEM = "- {name: memory, nominalQuota: 1}\n"
KUEUE = "apiVersion: kueue.x-k8s.io/v1beta1\n"


def _group(resources: str, flavor: str = "f", covered: str = "[cpu, memory]") -> str:
    return textwrap.dedent(f"""\
        - coveredResources: {covered}
          flavors:
          - name: {flavor}
            resources:
        """) + textwrap.indent(textwrap.dedent(resources), "      ")


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (
            "cohort: x\nresourceGroups:\n"
            + _group("- {name: cpu, nominalQuota: 9}\n- {name: memory, nominalQuota: x}\n"),
            "spec.resourceGroups[0].flavors[0].resources[1].nominalQuota",
            "not a quantity: 'x'",
        ),
        (
            "resourceGroups:\n"
            + _group("- {name: cpu, nominalQuota: 9, borrowingLimit: 1}\n" + MEM),
            "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
            "must be nil when cohort is empty",
        ),
        (
            "resourceGroups:\n" + _group("- {name: cpu, nominalQuota: 9, lendingLimit: 1}\n" + MEM),
            "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
            "must be nil when cohort is empty",
        ),
        (
            "cohort: x\nresourceGroups:\n"
            + _group("- {name: cpu, nominalQuota: 9, lendingLimit: 10}\n" + MEM),
            "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
            "must be less than or equal to the nominalQuota",
        ),
        (
            "resourceGroups:\n" + _group("- {name: cpu, nominalQuota: -1}\n" + MEM),
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
            "must be greater than or equal to 0",
        ),
        (
            "resourceGroups:\n"
            + _group("- {name: memory, nominalQuota: 1}\n- {name: cpu, nominalQuota: 1}\n"),
            "spec.resourceGroups[0].flavors[0].resources[0].name",
            "must match the name in coveredResources",
        ),
        (
            "resourceGroups:\n" + _group("- {name: cpu, nominalQuota: 1}\n"),
            "spec.resourceGroups[0].flavors[0].resources",
            "same number of resources as the coveredResources",
        ),
        (
            "resourceGroups:\n"
            + _group("- {name: cpu, nominalQuota: 1}\n", covered="[cpu]")
            + _group("- {name: cpu, nominalQuota: 1}\n", flavor="g", covered="[cpu]"),
            "spec.resourceGroups[1].coveredResources[0]",
            "Duplicate value: 'cpu'",
        ),
        (
            "resourceGroups:\n"
            + _group("- {name: cpu, nominalQuota: 1}\n", flavor="nope", covered="[cpu]"),
            "spec.resourceGroups[0].flavors[0].name",
            "unknown ResourceFlavor 'nope'",
        ),
        (
            "preemption: {borrowWithinCohort: {policy: LowerPriority}}",
            "spec.preemption",
            "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
        ),
        (
            "queueingStrategy: Fifo",
            "spec.queueingStrategy",
            "unsupported value 'Fifo'",
        ),
        ("cohort: Team_A", "spec.cohort", "invalid name 'Team_A'"),
        ("cohort: a\ncohortName: a", "spec.cohortName", "not both"),
        ("admissionChecks: [x]", "spec.admissionChecks", "unknown key 'admissionChecks'"),
        (
            "namespaceSelector: {matchExpressions: [{key: team, operator: In}]}",
            "spec.namespaceSelector.matchExpressions[0]",
            "must be specified when `operator` is 'In' or 'NotIn'",
        ),
    ],
)
def test_cluster_queue_errors_name_the_document_and_field(
    spec: str, field: str | None, words: str
) -> None:
    text = CQ_HEAD + "spec:\n" + textwrap.indent(spec, "  ")
    with pytest.raises(ConfigError) as raised:
        queues_from_yaml(text, "queues.yaml")
    error = raised.value
    assert error.field == field
    assert words in error.message
    assert str(error).startswith("queues.yaml:")
    assert "document 3 (ClusterQueue team-a)" in str(error)
    assert error.line is None or error.line > 0


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            KUEUE + "kind: Workload\nmetadata: {name: w}\n",
            "unknown kind 'Workload'",
        ),
        ("apiVersion: v1\nkind: ClusterQueue\nmetadata: {name: a}\n", "not served by 'v1'"),
        (
            KUEUE + "kind: ClusterQueue\n",
            "missing required key 'metadata'",
        ),
        (
            KUEUE + "kind: LocalQueue\nmetadata: {name: q}\nspec: {clusterQueue: nowhere}\n",
            "unknown ClusterQueue 'nowhere'",
        ),
        (
            KUEUE + "kind: Cohort\nmetadata: {name: a}\nspec: {parent: b}\n"
            "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: b}\n"
            "spec: {parentName: a}\n",
            "parent cycle a -> b -> a",
        ),
        (
            KUEUE + "kind: Cohort\nmetadata: {name: a}\nspec:\n"
            "  resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: "
            "[{name: cpu, nominalQuota: 1, lendingLimit: 1}]}]}]\n",
            "must be nil when parent is empty",
        ),
        (
            KUEUE + "kind: WorkloadPriorityClass\nmetadata: {name: p}\n",
            "missing required key 'value'",
        ),
        (
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {capability: {cpu: 1}, guarantee: {resource: {cpu: 2}}}\n",
            "guarantee of cpu is greater than its capability",
        ),
        ("a: [", "invalid YAML"),
    ],
)
def test_other_errors(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        queues_from_yaml(text, "queues.yaml")


def test_the_cluster_yaml_takes_queues_too() -> None:
    text = textwrap.dedent("""\
        nodes:
          - {names: "gpu[1-2]", gpus: 8, gpu_model: H100, cpus: 64, memory: 512G}
        queues:
          - apiVersion: kueue.x-k8s.io/v1beta1
            kind: ResourceFlavor
            metadata: {name: h100}
          - apiVersion: kueue.x-k8s.io/v1beta1
            kind: ClusterQueue
            metadata: {name: team-a}
            spec:
              resourceGroups:
              - coveredResources: [nvidia.com/gpu]
                flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: x}]}]
        """)
    with pytest.raises(ConfigError) as raised:
        cluster_from_yaml(text, "cluster.yaml")
    assert "document 2 (ClusterQueue team-a)" in str(raised.value)
    assert (
        raised.value.field
        == "queues[1].spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    )
    good = text.replace("nominalQuota: x", "nominalQuota: 16")
    cluster = cluster_from_yaml(good, "cluster.yaml")
    assert cluster.queues.cluster_queues["team-a"].resource_groups[0].flavors[0].name == "h100"
    assert list(cluster.queues.flavor_nodes(cluster, "h100")) == [0, 1]


@pytest.mark.parametrize("command", ["simulate", "controller"])
def test_a_bad_queues_file_exits_2_at_the_command_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "queues.yaml"
    bad.write_text(CQ_HEAD + "spec: {cohort: Bad_Name}\n")
    argv = {
        "simulate": ["simulate", "--generate", "1", "--limit", "5", "--nodes", "2"],
        "controller": ["controller", "--state-dir", str(tmp_path / "state")],
    }[command]
    assert main([*argv, "--queues", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "document 3 (ClusterQueue team-a)" in err and "spec.cohort" in err


def test_the_example_file_reads() -> None:
    path = Path(__file__).parents[2] / "examples" / "queues.yaml"
    q = queues_from_yaml(path.read_text(), str(path))
    assert set(q.cluster_queues) == {"research", "production"}
    assert q.cluster_queues["production"].queueing_strategy is QueueingStrategy.STRICT_FIFO


def test_yaml_nested_past_the_parsers_recursion_is_a_config_error() -> None:
    # PyYAML's composer recursed once per level: 5,000 levels were a RecursionError traceback.
    with pytest.raises(ConfigError, match="nested too deeply") as info:
        queues_from_yaml("a: " + "[" * 5_000 + "]" * 5_000 + "\n", "q.yaml")
    assert info.value.source == "q.yaml"
