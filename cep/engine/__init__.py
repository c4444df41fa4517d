"""cep.engine"""
