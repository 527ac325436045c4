"""Typed partial decoders for Node and Pod lists: only the fields the node pass needs.

msgspec skips every other field while parsing, so a 10,000-pod page costs a fraction of
a full ``json.loads`` and holds no more than the few values kept per pod. The types are not
tracked by the garbage collector (``gc=False``: they never form reference cycles), so a page's
thousands of decoded objects do not set off collections of the controller's whole heap. One pod decode
serves both the node tallies and the pod summaries of the resource lists (docs/compatibility.md#r3).
"""

from __future__ import annotations

from datetime import datetime

import msgspec


class _Empty(msgspec.Struct, gc=False):
    """Any JSON object whose content is irrelevant (counted, not read)."""


class ListMeta(msgspec.Struct, gc=False):
    """List metadata: the continue token."""

    continue_: str = msgspec.field(default="", name="continue")


class ObjectMeta(msgspec.Struct, rename="camel", gc=False):
    """The metadata fields read from nodes."""

    name: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    creation_timestamp: datetime | None = None


class NodeTaint(msgspec.Struct, gc=False):
    """``spec.taints[]``."""

    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(msgspec.Struct, gc=False):
    """``spec`` of a Node."""

    unschedulable: bool = False
    taints: list[NodeTaint] | None = None


class NodeConditionDoc(msgspec.Struct, rename="camel", gc=False):
    """``status.conditions[]`` of a Node."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


class NodeAddress(msgspec.Struct, gc=False):
    """``status.addresses[]``."""

    type: str = ""
    address: str = ""


class NodeSystemInfo(msgspec.Struct, rename="camel", gc=False):
    """``status.nodeInfo``."""

    kernel_version: str = ""
    os_image: str = ""
    container_runtime_version: str = ""
    kubelet_version: str = ""
    architecture: str = ""


class NodeStatusDoc(msgspec.Struct, rename="camel", gc=False):
    """``status`` of a Node; images and attached volumes are only counted."""

    capacity: dict[str, str] | None = None
    allocatable: dict[str, str] | None = None
    conditions: list[NodeConditionDoc] | None = None
    addresses: list[NodeAddress] | None = None
    node_info: NodeSystemInfo | None = None
    images: list[_Empty] | None = None
    volumes_attached: list[_Empty] | None = None


class NodeDoc(msgspec.Struct, gc=False):
    """A Node, reduced to what :class:`~clusterpulse_model.NodeMetrics` needs."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatusDoc = msgspec.field(default_factory=NodeStatusDoc)


class NodeList(msgspec.Struct, gc=False):
    """One page of ``GET /api/v1/nodes``."""

    items: list[NodeDoc] | None = None
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)


class ComputeRequests(msgspec.Struct, gc=False):
    """``resources.requests`` of a container: the two summed (other resources are skipped)."""

    cpu: str = ""
    memory: str = ""


class ResourceRequirements(msgspec.Struct, gc=False):
    """``resources`` of a container: only the requests."""

    requests: ComputeRequests | None = None


class ContainerDoc(msgspec.Struct, gc=False):
    """A regular container: only its resource requests."""

    resources: ResourceRequirements | None = None


class PodSpecDoc(msgspec.Struct, rename="camel", gc=False):
    """``spec`` of a Pod: the node it is bound to and its regular containers."""

    node_name: str = ""
    containers: list[ContainerDoc] | None = None


class PodStatusDoc(msgspec.Struct, gc=False):
    """``status`` of a Pod: the phase."""

    phase: str = ""


class PodMeta(msgspec.Struct, gc=False):
    """The metadata fields read from pods (the pod summaries' identity)."""

    name: str = ""
    namespace: str = ""


class LabelledPodMeta(PodMeta, gc=False):
    """Pod metadata with the labels, decoded only when the pod summaries copy them."""

    labels: dict[str, str] | None = None


class PodDoc(msgspec.Struct, gc=False):
    """A Pod, reduced to what node metrics and the pod summaries need."""

    metadata: PodMeta = msgspec.field(default_factory=PodMeta)
    spec: PodSpecDoc = msgspec.field(default_factory=PodSpecDoc)
    status: PodStatusDoc = msgspec.field(default_factory=PodStatusDoc)


class LabelledPodDoc(PodDoc, gc=False):
    """A :class:`PodDoc` with the pod's labels."""

    metadata: LabelledPodMeta = msgspec.field(default_factory=LabelledPodMeta)


class PodList(msgspec.Struct, gc=False):
    """One page of ``GET /api/v1/pods``."""

    items: list[PodDoc] | None = None
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)


class LabelledPodList(msgspec.Struct, gc=False):
    """One page of ``GET /api/v1/pods``, with each pod's labels."""

    items: list[LabelledPodDoc] | None = None
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)


class NamespaceMeta(msgspec.Struct, gc=False):
    """Metadata of a namespace: its name."""

    name: str = ""


class NamespaceDoc(msgspec.Struct, gc=False):
    """A Namespace: its name."""

    metadata: NamespaceMeta = msgspec.field(default_factory=NamespaceMeta)


class NamespaceList(msgspec.Struct, gc=False):
    """One page of ``GET /api/v1/namespaces``."""

    items: list[NamespaceDoc] | None = None
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)


node_list_decoder = msgspec.json.Decoder(NodeList)
node_decoder = msgspec.json.Decoder(NodeDoc)
pod_list_decoder = msgspec.json.Decoder(PodList)
labelled_pod_list_decoder = msgspec.json.Decoder(LabelledPodList)
pod_decoder = msgspec.json.Decoder(PodDoc)
namespace_list_decoder = msgspec.json.Decoder(NamespaceList)
namespace_decoder = msgspec.json.Decoder(NamespaceDoc)
