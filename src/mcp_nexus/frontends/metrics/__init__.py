"""frontends/metrics"""
