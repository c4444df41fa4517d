"""cep.io"""
