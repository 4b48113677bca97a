"""The security model shared by the controllers and the brokers: principals, ACL bindings,
quota entities, SCRAM credentials, the ``security.*``/``ssl.*``/``sasl.*`` config."""
