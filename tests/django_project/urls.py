from django.contrib import admin
from django.urls import path

from .testapp import views

urlpatterns = [
    path("", views.index, name="index"),
    path("response/", views.template_response),
    path("items/", views.ItemList.as_view(), name="items"),
    path("items/new/", views.item_form, name="item-form"),
    path("items/create/", views.ItemCreate.as_view()),
    path("about/", views.About.as_view(), {"who": "<you>"}),
    path("token/", views.token),
    path("interop/", views.interop),
    path("dtl/", views.dtl),
    path("fragment/", views.fragment),
    path("broken/", views.broken),
    path("raises/", views.raises),
    path("missing/", views.missing),
    path("include/<str:name>/", views.include),
    path("calls-raises/", views.calls_raises),
    path("py/<str:name>/", views.py_template),
    path("missing-list/", views.missing_list),
    path("signup/", views.signup),
    path("admin/", admin.site.urls),
]
