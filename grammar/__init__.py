"""The Lark grammar of the rule language, shipped inside the wheel as ``cep.grammar``."""
