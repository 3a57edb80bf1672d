"""The classic group protocol's requests, responses and error codes, as the model exchanges them.

Only the fields the group protocol's behaviour depends on are kept (JoinGroup v9, SyncGroup v5,
Heartbeat v4, LeaveGroup v5, OffsetCommit v8, OffsetFetch v8, FindCoordinator v4). Every message is a frozen, hashable value so that
model states holding messages in flight stay hashable. Error codes carry Kafka's numbers
(clients/src/main/java/org/apache/kafka/common/protocol/Errors.java).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from model.types import TopicPartition


class Errors(IntEnum):
    """The error codes the group protocol answers with (``org.apache.kafka.common.protocol.Errors``)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    UNKNOWN_TOPIC_OR_PARTITION = 3
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    MEMBER_ID_REQUIRED = 79


NO_GENERATION = -1  # AbstractCoordinator.Generation.NO_GENERATION.generationId
UNKNOWN_MEMBER_ID = ""  # JoinGroupRequest.UNKNOWN_MEMBER_ID


@dataclass(frozen=True, slots=True)
class ConsumerProtocolSubscription:
    """The metadata a consumer puts in each JoinGroup protocol (ConsumerProtocolSubscription v3)."""

    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = NO_GENERATION
    rack: str | None = None
    # The StickyAssignor's userData: the partitions of its last assignment and that generation
    # (StickyAssignor.subscriptionUserData); None for the other assignors.
    user_data: tuple[tuple[TopicPartition, ...], int] | None = None


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    member_id: str  # "" on a first join (KIP-394)
    instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    # (assignor name, metadata) in the member's order of preference; protocol type is "consumer".
    protocols: tuple[tuple[str, ConsumerProtocolSubscription], ...]
    reason: str = ""


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    instance_id: str | None
    metadata: ConsumerProtocolSubscription


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error: Errors
    generation: int = NO_GENERATION
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()  # only the leader gets the member list
    skip_assignment: bool = False  # KIP-814: a static leader rejoining a Stable group


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    member_id: str
    instance_id: str | None
    generation: int
    protocol_name: str | None
    # Only the leader sends assignments: (member id, partitions).
    assignments: tuple[tuple[str, tuple[TopicPartition, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error: Errors
    assignment: tuple[TopicPartition, ...] = ()
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    member_id: str
    instance_id: str | None
    generation: int


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error: Errors


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    # LeaveGroup v3+ is a batch of (member id, instance id); the consumer sends one.
    members: tuple[tuple[str, str | None], ...]
    reason: str = ""


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error: Errors
    member_errors: tuple[tuple[str, Errors], ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    member_id: str
    instance_id: str | None
    generation: int  # -1 for a commit from a consumer outside the group (simple consumer)
    offsets: tuple[tuple[TopicPartition, int], ...]


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    error: Errors
    partition_errors: tuple[tuple[TopicPartition, Errors], ...] = ()


NO_OFFSET = -1  # OffsetFetchResponse.INVALID_OFFSET: the group has committed nothing for the partition


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    """The committed offsets of some partitions (a consumer asks for those it was just assigned)."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error: Errors
    offsets: tuple[tuple[TopicPartition, int], ...] = ()  # NO_OFFSET where nothing is committed


@dataclass(frozen=True, slots=True)
class FindCoordinatorRequest:
    """Which broker coordinates the group ``key`` (any broker answers, from its metadata)."""

    key: str


@dataclass(frozen=True, slots=True)
class FindCoordinatorResponse:
    error: Errors
    node: int = -1  # the coordinator's broker id


Request = (JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest | OffsetCommitRequest
           | OffsetFetchRequest | FindCoordinatorRequest)
Response = (
    JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse | OffsetCommitResponse
    | OffsetFetchResponse | FindCoordinatorResponse
)
