"""Security of the Kafka listeners: SASL (PLAIN, SCRAM-SHA-256/512), principals, the ACL
authorization machinery and client quotas. Each API's authorization rule lives beside its
handler (data_plane/broker/handlers); TLS contexts and the PLAIN message live in
common.security. Every module here is sans-IO: the broker's connection layer feeds bytes and
decoded requests in and acts on what comes out."""
