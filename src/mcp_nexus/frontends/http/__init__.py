"""frontends/http"""
