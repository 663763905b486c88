# security/: ACLs, TLS contexts, identities (built as a library the daemon links)
