"""The rule language front end: grammar → parser → AST → checker → IR, with located errors."""
