"""cep.lang"""
