"""The dashboard and the playground: the product's face (login session, not API keys)."""
