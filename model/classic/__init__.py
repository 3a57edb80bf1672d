"""Kafka's *classic* consumer-group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup).

``model.classic.coordinator`` is the group coordinator (``ClassicGroup`` and
``GroupMetadataManager``'s classic-group part); ``model.classic.member`` the consumer
(``AbstractCoordinator`` / ``ConsumerCoordinator``). The transition system (``model.system``),
the network, the records and the assignors are shared by protocols and stay in ``model``. The
*consumer* group protocol of KIP-848 (ConsumerGroupHeartbeat; the Java client's default from Kafka
5.0) has its place beside this package, as ``model.consumer_group`` with the same two parts.
"""
