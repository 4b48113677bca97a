"""Security of the Kafka listeners: SASL (PLAIN, SCRAM-SHA-256/512), principals, ACL
authorization and client quotas (TLS contexts and the PLAIN message live in common.security).
Every module here is sans-IO: the broker's connection layer feeds bytes and decoded requests
in and acts on what comes out."""
