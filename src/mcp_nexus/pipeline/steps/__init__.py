"""pipeline/steps"""
