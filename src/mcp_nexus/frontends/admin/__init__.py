"""frontends/admin"""
