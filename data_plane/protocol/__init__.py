"""Kafka wire protocol"""
