"""The security model shared by the controllers, the brokers and the client: principals, ACL
bindings, quota entities, SCRAM credentials, the ``security.*``/``ssl.*``/``sasl.*`` config,
TLS contexts and sockets (``tls``, ``tls_socket``) and the SASL/PLAIN message (``plain``)."""
